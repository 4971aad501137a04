# Writes OUTPUT, a C++ file defining genesis::cli::serve::kChatHtml as the text of INPUT (the chat
# page, built into the binary).
file(READ "${INPUT}" text)
string(FIND "${text}" ")genesis_html\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw string's delimiter")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from chat.html at build time: do not edit.\n"
  "#include \"server.h\"\n"
  "namespace genesis::cli::serve {\n"
  "const char* const kChatHtml = R\"genesis_html(${text})genesis_html\";\n"
  "}  // namespace genesis::cli::serve\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
