// chat_template/render.h - renders a parsed template against a context (the template's variables).
#pragma once

#include <string>

#include "ast.h"
#include "genesis/chat_template.hpp"

namespace genesis::chat {

/** The rendered text; throws genesis::Error on runtime errors, raise_exception and exceeded limits. */
std::string render_program(const Program& program, const Dict& context, const ChatTemplateLimits& limits);

}  // namespace genesis::chat
