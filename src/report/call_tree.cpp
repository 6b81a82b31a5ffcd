// Call trees (see call_tree.h). child() runs once per ENTER: one hash lookup, and an append
// when the path is new.
#include "report/call_tree.h"

namespace sonde::report {

uint32_t CallTree::child(uint32_t parent, uint32_t function) {
    const uint64_t key = (uint64_t{parent} << 32) | function;
    const auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    const uint32_t n = static_cast<uint32_t>(nodes_.size());
    Node node;
    node.function = function;
    node.parent = parent;
    node.depth = nodes_[parent].depth + 1;
    nodes_.push_back(node);
    Node &p = nodes_[parent];
    if (p.last_child == none)
        p.first_child = n;
    else
        nodes_[p.last_child].next_sibling = n;
    p.last_child = n;
    index_.emplace(key, n);
    return n;
}

std::vector<uint32_t> CallTree::children(uint32_t n) const {
    std::vector<uint32_t> out;
    for (uint32_t c = nodes_[n].first_child; c != none; c = nodes_[c].next_sibling) out.push_back(c);
    return out;
}

}  // namespace sonde::report
