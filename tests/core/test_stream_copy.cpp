// core/stream_copy.h (an internal header): stream_copy() copies exactly the bytes asked for,
// through non-temporal stores where the destination is 16-byte aligned and memcpy elsewhere:
// every size from 0 to 100 bytes and two large ones (the last part under 16 bytes included),
// every destination and source alignment from 0 to 16, and the bytes around the destination
// left as they were.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "check.hpp"
#include "core/stream_copy.h"

using sonde_test::check;

namespace {

// Out of line, as the library's callers are: inlined into the loops below, GCC's object-size
// analysis warns about a memcpy bound of its own invention.
__attribute__((noinline)) void stream_copy(void *dst, const void *src, size_t bytes) {
    sonde::core::stream_copy(dst, src, bytes);
}

}  // namespace

int main() {
    const size_t sizes_big[] = {(size_t{1} << 20) + 7, size_t{128} << 10};
    std::vector<size_t> sizes;
    for (size_t n = 0; n <= 100; ++n) sizes.push_back(n);
    for (size_t n : sizes_big) sizes.push_back(n);
    const size_t room = (size_t{1} << 20) + 64;
    // 64-byte aligned bases, so that the offsets below give every alignment.
    std::unique_ptr<unsigned char[]> src_mem(new unsigned char[room + 64]),
        dst_mem(new unsigned char[room + 64]);
    unsigned char *const src = src_mem.get() + (64 - reinterpret_cast<uintptr_t>(src_mem.get()) % 64);
    unsigned char *const dst = dst_mem.get() + (64 - reinterpret_cast<uintptr_t>(dst_mem.get()) % 64);
    for (size_t i = 0; i < room - 64; ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    for (size_t n : sizes) {
        const size_t offsets = n > 100 ? 3 : 17;  // the large sizes at offsets 0, 1 and 2 only
        for (size_t d = 0; d < offsets; ++d) {
            for (size_t s = 0; s<offsets; s += n> 100 ? 1 : 4) {
                for (size_t i = 0; i < n + 48; ++i) dst[i] = 0xA5;
                stream_copy(dst + d, src + s, n);
                bool same = true, around = true;
                for (size_t i = 0; i < n; ++i) same = same && dst[d + i] == src[s + i];
                for (size_t i = 0; i < d; ++i) around = around && dst[i] == 0xA5;
                for (size_t i = d + n; i < n + 48; ++i) around = around && dst[i] == 0xA5;
                check(same, "the bytes copied", n * 100 + d);
                check(around, "the bytes around the copy untouched", n * 100 + d);
            }
        }
    }
    return sonde_test::finish("stream_copy");
}
