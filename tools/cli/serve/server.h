// server.h - `genesis serve`: the HTTP server's options and entry point.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../cli.h"
#include "backend.h"

namespace genesis::cli::serve {

/** A LoRA adapter the server serves beside the base: its name in the API and its PEFT folder. */
struct AdapterSpec {
  std::string name, dir;
};

/** The serve command's flags. */
struct ServeOptions {
  std::string model_dir;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key, api_key_file;
  std::string served_model_name;
  DeviceFlags dev;
  EngineLimits limits;
  int64_t max_body_bytes = 16 << 20;
  int http_threads = 256;
  bool reasoning_parser = true;
  std::vector<std::string> adapter_args;  ///< --adapter [NAME=]DIR
  std::vector<AdapterSpec> adapters;      ///< parsed from adapter_args
};

/** Runs the server until SIGINT or SIGTERM; returns the exit status. */
int run_server(const GlobalOptions& g, ServeOptions& o);

/** The chat page (chat.html, built in). */
extern const char* const kChatHtml;

}  // namespace genesis::cli::serve
