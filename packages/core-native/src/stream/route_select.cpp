#include "bmoe/stream/route_select.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace bmoe {

std::vector<int32_t> route_select(const std::vector<float> & logits, const std::vector<float> & selection_bias,
                                  route_gating gating, int32_t k) {
    const size_t n = logits.size();
    std::vector<float> score(logits);
    if (!selection_bias.empty() && selection_bias.size() == n) {
        // The bias is added to the probabilities, so the gating function matters here.
        if (gating == route_gating::sigmoid) {
            for (float & s : score) s = 1.0f / (1.0f + std::exp(-s));
        } else if (gating == route_gating::softmax) {
            const float mx = *std::max_element(score.begin(), score.end());
            float sum = 0;
            for (float & s : score) sum += (s = std::exp(s - mx));
            for (float & s : score) s /= sum;
        }
        for (size_t i = 0; i < n; i++) score[i] += selection_bias[i];
    }
    std::vector<int32_t> ids(n);
    std::iota(ids.begin(), ids.end(), 0);
    const size_t kk = std::min<size_t>(n, (size_t) std::max(0, k));
    std::partial_sort(ids.begin(), ids.begin() + (std::ptrdiff_t) kk, ids.end(), [&](int32_t a, int32_t b) {
        return score[(size_t) a] != score[(size_t) b] ? score[(size_t) a] > score[(size_t) b] : a < b;
    });
    ids.resize(kk);
    return ids;
}

}  // namespace bmoe
