// sys/meminfo against fake /proc and /sys trees: no cgroup, cgroup v1, cgroup v2 (with a limit on
// an ancestor), a container's own cgroup mounted as "/", and "no limit" values.
#include "check.h"

#include "bmoe/sys/meminfo.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

using namespace bmoe;

static constexpr uint64_t MiB = 1ull << 20;

static void put(const std::string & path, const std::string & text) {
    std::string dir = path.substr(0, path.rfind('/'));
    std::string cmd = "mkdir -p '" + dir + "'";
    CHECK(std::system(cmd.c_str()) == 0);
    std::ofstream(path) << text;
}

static std::string tree(const char * name, uint64_t mem_available_mib) {
    const std::string root = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/bmoe-meminfo-" + name + "-" + std::to_string(getpid());
    std::system(("rm -rf '" + root + "'").c_str());
    put(root + "/proc/meminfo", "MemTotal: 25000000 kB\nMemFree: 1000 kB\nMemAvailable: " + std::to_string(mem_available_mib * 1024) + " kB\n");
    return root;
}

static void test_no_cgroup() {
    const std::string r = tree("none", 20000);
    put(r + "/proc/self/cgroup", "0::/\n");
    put(r + "/proc/self/mountinfo", "22 1 0:21 / / rw - ext4 /dev/vda rw\n");
    CHECK(mem_available_bytes_at(r) == 20000 * MiB);
}

static void test_v1_limit() {
    const std::string r = tree("v1", 20000);
    put(r + "/proc/self/cgroup", "9:name=systemd:/\n5:memory:/bench/row1\n4:cpu:/\n");
    put(r + "/proc/self/mountinfo", "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
    put(r + "/sys/fs/cgroup/memory/bench/row1/memory.limit_in_bytes", std::to_string(2048 * MiB) + "\n");
    put(r + "/sys/fs/cgroup/memory/bench/row1/memory.usage_in_bytes", std::to_string(700 * MiB) + "\n");
    put(r + "/sys/fs/cgroup/memory/bench/row1/memory.stat", "cache 1\ntotal_inactive_file " + std::to_string(200 * MiB) + "\n");
    put(r + "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    // 2048 - (700 - 200 reclaimable) = 1548 MiB, below MemAvailable.
    CHECK(mem_available_bytes_at(r) == 1548 * MiB);
}

static void test_v2_ancestor_limit() {
    const std::string r = tree("v2", 3000);
    put(r + "/proc/self/cgroup", "0::/user.slice/app/job\n");
    put(r + "/proc/self/mountinfo", "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    put(r + "/sys/fs/cgroup/user.slice/app/job/memory.max", "max\n");
    put(r + "/sys/fs/cgroup/user.slice/app/job/memory.current", std::to_string(100 * MiB) + "\n");
    put(r + "/sys/fs/cgroup/user.slice/app/memory.max", std::to_string(1024 * MiB) + "\n");
    put(r + "/sys/fs/cgroup/user.slice/app/memory.current", std::to_string(1000 * MiB) + "\n");
    put(r + "/sys/fs/cgroup/user.slice/app/memory.stat", "anon 1\ninactive_file " + std::to_string(100 * MiB) + "\n");
    CHECK(mem_available_bytes_at(r) == 124 * MiB);
    // A limit above MemAvailable leaves MemAvailable in force.
    put(r + "/sys/fs/cgroup/user.slice/app/memory.max", std::to_string(100000 * MiB) + "\n");
    CHECK(mem_available_bytes_at(r) == 3000 * MiB);
}

static void test_container_root() {
    // Inside a container: /proc/self/cgroup names the host's path, the cgroup is mounted as "/".
    const std::string r = tree("container", 20000);
    put(r + "/proc/self/cgroup", "0::/docker/abc123\n");
    put(r + "/proc/self/mountinfo", "40 35 0:30 /docker/abc123 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
    put(r + "/sys/fs/cgroup/memory.max", std::to_string(2048 * MiB) + "\n");
    put(r + "/sys/fs/cgroup/memory.current", std::to_string(48 * MiB) + "\n");
    CHECK(mem_available_bytes_at(r) == 2000 * MiB);
}

int main() {
    test_no_cgroup();
    test_v1_limit();
    test_v2_ancestor_limit();
    test_container_root();
    return check_report("test_meminfo");
}
