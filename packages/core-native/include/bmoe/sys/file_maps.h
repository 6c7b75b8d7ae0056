#pragma once
// Where a file is mapped in this process, from /proc/self/maps (matched by device and inode, so
// a path given differently still matches).
#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

struct file_vma {
    uintptr_t start       = 0;
    uintptr_t end         = 0;
    uint64_t  file_offset = 0;  // offset in the file of `start`
};

// Every mapping of `path`; empty when the file is not mapped (or /proc is unreadable).
std::vector<file_vma> file_mappings(const std::string & path);

}  // namespace bmoe
