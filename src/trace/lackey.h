// Reader of valgrind lackey `--trace-mem=yes` text, plain or zstd: one shard, no timestamps.
// `I  addr,size` is an instruction fetch (pc = address); ` L`, ` S`, ` M addr,size` are a read,
// a write and a modify whose pc is the address of the preceding I line; `==` lines are
// valgrind's log and empty lines are skipped; anything else is a format error.
#pragma once

#include <memory>
#include <string>

#include "trace/source.h"

namespace sonde::trace {

// Takes the opened, peeked `source` (see Input::open).
sonde_status_t open_lackey(std::unique_ptr<Source> source, std::unique_ptr<Input> *out, std::string *error);

}  // namespace sonde::trace
