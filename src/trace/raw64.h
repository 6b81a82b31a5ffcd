// Reader of raw little-endian 64-bit addresses (plain or zstd): one shard, no timestamps; each
// address is an 8-byte SONDE_MEMREF_READ with pc 0. A size that is not a multiple of 8 is a
// format error naming the offset of the trailing bytes.
#pragma once

#include <memory>
#include <string>

#include "trace/source.h"

namespace sonde::trace {

// Takes the opened, peeked `source` (see Input::open).
sonde_status_t open_raw64(std::unique_ptr<Source> source, std::unique_ptr<Input> *out, std::string *error);

}  // namespace sonde::trace
