#include "bmoe/cache/cache_policy.h"

namespace bmoe {

admit_result cache_policy::admit(const expert_key & k) {
    admit_result r;
    auto it = index.find(k);
    if (it != index.end()) {
        lru.splice(lru.begin(), lru, it->second);
        r.hit = true;
        return r;
    }
    if (capacity <= 0) {
        return r;
    }
    while ((int32_t) lru.size() >= capacity) {
        r.evicted.push_back(lru.back());
        index.erase(lru.back());
        lru.pop_back();
    }
    lru.push_front(k);
    index[k] = lru.begin();
    r.admitted = true;
    return r;
}

bool cache_policy::erase(const expert_key & k) {
    auto it = index.find(k);
    if (it == index.end()) return false;
    lru.erase(it->second);
    index.erase(it);
    return true;
}

std::vector<expert_key> cache_policy::order() const {
    return std::vector<expert_key>(lru.begin(), lru.end());
}

}  // namespace bmoe
