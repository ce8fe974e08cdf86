#include "ref/layout_index.hpp"

namespace vkml::test::ref_layout_index {

HostTensor trilu(const HostTensor& x, int64_t k, bool upper) {
    HostTensor y = x;
    const size_t r = x.shape().rank();
    const int64_t rows = x.shape()[r - 2], cols = x.shape()[r - 1];
    for (size_t e = 0; e < y.size(); ++e) {
        const int64_t j = int64_t(e) % cols, i = (int64_t(e) / cols) % rows;
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) y[e] = 0;
    }
    return y;
}

} // namespace vkml::test::ref_layout_index
