#include "bmoe/sys/file_maps.h"

#include "bmoe/sys/proc_maps.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace bmoe {

std::vector<file_vma> file_mappings(const std::string & path) {
    std::vector<file_vma> out;
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) return out;
    for (const proc_mapping & m : proc_mappings()) {
        // Device numbers in /proc/self/maps are major:minor of st_dev.
        if (m.inode != (uint64_t) st.st_ino || makedev(m.dev_major, m.dev_minor) != st.st_dev) continue;
        out.push_back({ m.start, m.end, m.offset });
    }
    return out;
}

}  // namespace bmoe
