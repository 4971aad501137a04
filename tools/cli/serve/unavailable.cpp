// unavailable.cpp - `genesis serve` in a build without cpp-httplib: says what to install.
#include <CLI/CLI.hpp>

#include "../cli.h"

namespace genesis::cli {

CommandRun setup_serve(CLI::App& c) {
  c.allow_extras();
  return [](const GlobalOptions&) -> int {
    throw Error(GN_ERR_NOT_FOUND,
                "this genesis was built without cpp-httplib: install libcpp-httplib-dev and rebuild to get `serve`");
  };
}

}  // namespace genesis::cli
