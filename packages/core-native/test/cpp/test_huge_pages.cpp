// Which anonymous ranges a load gets huge pages for: what appeared during it, whole 2 MiB pages
// only, none of what was there before (a new buffer may merge with an old mapping).
#include "check.h"

#include "bmoe/sys/huge_pages.h"

using namespace bmoe;

static const uintptr_t MB = 1 << 20;

static void test_a_new_mapping_shrinks_to_whole_huge_pages() {
    const auto r = new_huge_ranges({}, { { 3 * MB + 4096, 41 * MB + 8192 } }, 4 * MB);
    CHECK(r.size() == 1 && r[0].start == 4 * MB && r[0].end == 40 * MB);
    // Too small once aligned: nothing.
    CHECK(new_huge_ranges({}, { { 1 * MB, 5 * MB } }, 4 * MB).empty());
    CHECK(new_huge_ranges({}, { { 2 * MB, 6 * MB } }, 4 * MB).size() == 1);
}

static void test_what_was_there_before_is_left_alone() {
    // Unchanged mappings: nothing new.
    const std::vector<mem_range> old = { { 10 * MB, 20 * MB }, { 100 * MB, 104 * MB } };
    CHECK(new_huge_ranges(old, old, 2 * MB).empty());
    // A buffer merged after an old mapping (one VMA 10–60 MiB now): only 20–60 MiB.
    auto r = new_huge_ranges(old, { { 10 * MB, 60 * MB }, { 100 * MB, 104 * MB } }, 2 * MB);
    CHECK(r.size() == 1 && r[0].start == 20 * MB && r[0].end == 60 * MB);
    // Merged on both sides of an old one, and one old range out of order in `before`.
    r = new_huge_ranges({ { 100 * MB, 104 * MB }, { 30 * MB, 32 * MB } }, { { 20 * MB, 50 * MB } }, 2 * MB);
    CHECK(r.size() == 2 && r[0].start == 20 * MB && r[0].end == 30 * MB && r[1].start == 32 * MB && r[1].end == 50 * MB);
    // An old mapping that grew in place is new only where it grew.
    r = new_huge_ranges({ { 10 * MB, 20 * MB } }, { { 10 * MB, 20 * MB + 4096 } }, 2 * MB);
    CHECK(r.empty());
}

static void test_this_process_maps_something_anonymous() {
    const auto now = anon_mappings();
    CHECK(!now.empty());
    for (const auto & m : now) CHECK(m.end > m.start);
    // Against itself, nothing is new.
    CHECK(new_huge_ranges(now, now, 0).empty());
}

int main() {
    test_a_new_mapping_shrinks_to_whole_huge_pages();
    test_what_was_there_before_is_left_alone();
    test_this_process_maps_something_anonymous();
    return check_report("huge_pages");
}
