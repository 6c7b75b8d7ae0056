// libFuzzer harness: stb_image as bmoe calls it on a request's image (runtime/media.cpp) — the
// header read, the pixel bound, then an RGB decode — under AddressSanitizer. Not part of the test
// run (it needs clang's libFuzzer and minutes of CPU); run by hand after updating the pin:
//
//   apt-get install clang-14 libclang-rt-14-dev imagemagick
//   clang++-14 -g -O1 -fsanitize=fuzzer,address -I deps/llama.cpp/vendor/stb \
//     test/fuzz/stb_image_fuzz.cpp -o /tmp/stb_fuzz
//   mkdir -p /tmp/stb-seeds /tmp/stb-corpus && cd /tmp/stb-seeds && \
//     convert -size 13x7 gradient:red-blue a.png && for f in jpg gif bmp tga ppm pgm psd hdr; do convert a.png a.$f; done
//   /tmp/stb_fuzz /tmp/stb-corpus /tmp/stb-seeds -max_len=8192 -rss_limit_mb=3072 -timeout=20 -max_total_time=1200
//
// The pixel bound here is 4 Mpx (bmoe's is 64 Mpx per image) to keep each input fast.
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * d, size_t n) {
    int w = 0, h = 0, c = 0;
    if (n == 0 || n > (size_t) INT32_MAX || !stbi_info_from_memory(d, (int) n, &w, &h, &c)) return 0;
    if (w <= 0 || h <= 0 || (uint64_t) w * (uint64_t) h > (uint64_t) 4 << 20) return 0;
    int       ow = 0, oh = 0, oc = 0;
    stbi_uc * p = stbi_load_from_memory(d, (int) n, &ow, &oh, &oc, 3);
    if (p) stbi_image_free(p);
    return 0;
}
