// chat_template/render.h - renders a parsed template against a context (the template's variables).
#pragma once

#include <string>

#include "ast.h"

namespace genesis::chat {

/** The rendered text; throws genesis::Error on runtime errors and raise_exception. */
std::string render_program(const Program& program, const Dict& context);

}  // namespace genesis::chat
