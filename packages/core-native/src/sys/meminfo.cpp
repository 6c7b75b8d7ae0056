#include "bmoe/sys/meminfo.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace bmoe {

namespace {

constexpr uint64_t NO_LIMIT = UINT64_MAX;

bool read_text(const std::string & path, std::string & out) {
    std::ifstream f(path);
    if (!f) return false;
    std::ostringstream ss;
    ss << f.rdbuf();
    out = ss.str();
    return true;
}

// A number file ("max", or a huge v1 value such as 9223372036854771712, means no limit).
uint64_t read_bytes(const std::string & path) {
    std::string t;
    if (!read_text(path, t) || t.rfind("max", 0) == 0) return NO_LIMIT;
    unsigned long long v = 0;
    if (std::sscanf(t.c_str(), "%llu", &v) != 1) return NO_LIMIT;
    return v >= (1ull << 62) ? NO_LIMIT : (uint64_t) v;
}

// One key of a memory.stat file (inactive_file / total_inactive_file): page cache the kernel
// reclaims before it kills anyone, so it is room too.
uint64_t read_stat(const std::string & path, const std::string & key) {
    std::string t;
    if (!read_text(path, t)) return 0;
    std::istringstream in(t);
    std::string k;
    unsigned long long v = 0;
    while (in >> k >> v) {
        if (k == key) return v;
    }
    return 0;
}

struct memory_cgroup {
    std::string dir;        // this process's cgroup directory ("" = none found)
    std::string mount;      // where its hierarchy is mounted (walk up to here)
    bool        v2 = false;
};

// /proc/self/cgroup: "0::/path" (v2) or "N:memory[,…]:/path" (v1); /proc/self/mountinfo gives the
// hierarchy's mount point and the root it shows (containers mount their own cgroup as "/").
memory_cgroup find_memory_cgroup(const std::string & root) {
    memory_cgroup cg;
    std::string text;
    if (!read_text(root + "/proc/self/cgroup", text)) return cg;
    std::string v1_path, v2_path;
    bool        have_v2 = false;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        const size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        const std::string ctrls = "," + line.substr(a + 1, b - a - 1) + ",", path = line.substr(b + 1);
        if (line.compare(0, a, "0") == 0 && b == a + 1) {
            v2_path = path;
            have_v2 = true;
        } else if (ctrls.find(",memory,") != std::string::npos) {
            v1_path = path;
        }
    }
    if (!read_text(root + "/proc/self/mountinfo", text)) return cg;
    std::istringstream mounts(text);
    for (std::string line; std::getline(mounts, line);) {
        std::istringstream f(line);
        std::string id, parent, dev, mroot, mpoint, rest, fstype, source, opts;
        f >> id >> parent >> dev >> mroot >> mpoint;
        while (f >> rest && rest != "-") {}
        f >> fstype >> source >> opts;
        const bool is_v1 = fstype == "cgroup" && ("," + opts + ",").find(",memory,") != std::string::npos;
        const bool is_v2 = fstype == "cgroup2";
        if (!(is_v1 && !v1_path.empty()) && !(is_v2 && have_v2 && v1_path.empty())) continue;
        std::string path = is_v1 ? v1_path : v2_path;
        if (mroot != "/" && path.rfind(mroot, 0) == 0) path = path.substr(mroot.size());
        cg.mount = root + mpoint;
        cg.dir   = cg.mount + (path == "/" ? "" : path);
        cg.v2    = is_v2;
        return cg;
    }
    return cg;
}

// The least room any level from this cgroup up to its mount leaves: limit - (usage - inactive file).
uint64_t cgroup_room(const memory_cgroup & cg) {
    uint64_t room = NO_LIMIT;
    std::string dir = cg.dir;
    while (!dir.empty() && dir.size() >= cg.mount.size()) {
        const uint64_t limit = read_bytes(dir + (cg.v2 ? "/memory.max" : "/memory.limit_in_bytes"));
        if (limit != NO_LIMIT) {
            const uint64_t usage    = read_bytes(dir + (cg.v2 ? "/memory.current" : "/memory.usage_in_bytes"));
            const uint64_t inactive = read_stat(dir + "/memory.stat", cg.v2 ? "inactive_file" : "total_inactive_file");
            const uint64_t used     = usage == NO_LIMIT ? 0 : (usage > inactive ? usage - inactive : 0);
            room = std::min(room, limit > used ? limit - used : 0);
        }
        if (dir == cg.mount) break;
        dir = dir.substr(0, dir.rfind('/'));
    }
    return room;
}

}  // namespace

uint64_t mem_available_bytes_at(const std::string & root) {
    FILE * f = std::fopen((root + "/proc/meminfo").c_str(), "r");
    if (!f) return 0;
    char               line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof(line), f)) {
        if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    }
    std::fclose(f);
    const memory_cgroup cg = find_memory_cgroup(root);
    const uint64_t      available = (uint64_t) kb * 1024;
    return cg.dir.empty() ? available : std::min(available, cgroup_room(cg));
}

uint64_t mem_available_bytes() {
    return mem_available_bytes_at("");
}

}  // namespace bmoe
