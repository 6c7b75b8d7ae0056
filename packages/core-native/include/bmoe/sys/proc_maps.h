#pragma once
// This process's mappings, one parsed line of /proc/self/maps each (file_maps and huge_pages
// select from them).
#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

struct proc_mapping {
    uintptr_t    start  = 0;
    uintptr_t    end    = 0;
    std::string  perms;          // "rw-p", "r--s", ...
    uint64_t     offset = 0;     // in the file, of `start`
    unsigned int dev_major = 0;
    unsigned int dev_minor = 0;
    uint64_t     inode = 0;      // 0: not a file
    std::string  name;           // the path, "[heap]", "[anon:...]", or "" (anonymous)
};

// Every mapping, in address order; empty when /proc is unreadable.
std::vector<proc_mapping> proc_mappings();

}  // namespace bmoe
