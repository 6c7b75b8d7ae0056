#pragma once
// Keeps a process alive when the model file it has mapped is truncated or rewritten under it
// (`cp new.gguf served.gguf` truncates first). Touching a mapped page past the new end of file
// raises SIGBUS, which would kill the process; the guard's handler instead maps zero pages over
// the rest of that mapping and marks the file changed. The computation then finishes on garbage,
// and the generator, which checks the guard after every decode, turns it into an error: the
// model refuses every later request with the same one-line message (load it again).
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace bmoe {

struct file_guard {
    // Records the file's identity and registers its current mappings (call after llama.cpp has
    // mapped it). Never throws: a file with no mapping (read into memory) gets only the check.
    explicit file_guard(const std::string & path);
    ~file_guard();
    file_guard(const file_guard &) = delete;
    file_guard & operator=(const file_guard &) = delete;

    // "" while the file is as loaded; else one line naming the file and what changed. With
    // `stat_file` false only the SIGBUS mark is read (an atomic load): cheap enough for every decode.
    std::string check(bool stat_file = true) const;

    std::string path;
    dev_t       dev      = 0;
    ino_t       ino      = 0;
    off_t       size     = 0;
    int64_t     mtime_ns = 0;
    int         slot     = -1;  // in the SIGBUS handler's table; -1 = no mappings registered
};

}  // namespace bmoe
