// Call trees: the merged tree of call paths (uftrace's `graph`), one node per distinct path
// from a thread's outermost call, with its calls, inclusive and self time. A tree grows with
// the number of distinct paths, not with the number of events. TreeBuilder is the sink that
// grows one.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "report/walker.h"

namespace sonde::report {

class CallTree {
public:
    static constexpr uint32_t root = 0;  // node 0 stands for "no caller"; its function is `none`
    static constexpr uint32_t none = UINT32_MAX;

    struct Node {
        uint32_t function = FunctionTable::none;
        uint32_t parent = none;
        uint32_t first_child = none;  // children in the order they were first called
        uint32_t last_child = none;
        uint32_t next_sibling = none;
        uint32_t depth = 0;  // root 0, its children 1, ...
        uint64_t calls = 0;
        uint64_t total_ns = 0;  // sum of the calls' durations (a path never nests itself)
        uint64_t self_ns = 0;
    };

    CallTree() { nodes_.emplace_back(); }

    // The child of `parent` for `function`, added if new.
    uint32_t child(uint32_t parent, uint32_t function);
    // Drops the lookup index once the tree is complete (child() must not be called after).
    void seal() { std::unordered_map<uint64_t, uint32_t>().swap(index_); }

    const std::vector<Node> &nodes() const { return nodes_; }
    Node &node(uint32_t n) { return nodes_[n]; }
    const Node &node(uint32_t n) const { return nodes_[n]; }
    // The children of `n`, in first-call order.
    std::vector<uint32_t> children(uint32_t n) const;

private:
    std::vector<Node> nodes_;
    std::unordered_map<uint64_t, uint32_t> index_;  // (parent << 32 | function) -> node
};

// Grows the CallTree it points to from balanced calls; each thread starts again at the root,
// so threads that share a tree (folded export) merge equal stacks, and an owner that keeps one
// tree per thread points the builder at the thread's tree in its own begin_thread().
class TreeBuilder : public Sink {
public:
    explicit TreeBuilder(CallTree *tree) : tree_(tree) {}
    void set_tree(CallTree *tree) { tree_ = tree; }
    CallTree *tree() const { return tree_; }

    void begin_thread(const ThreadInfo &) override {
        path_.clear();
        path_.push_back(CallTree::root);
    }
    void enter(uint32_t function, uint64_t, uint32_t) override {
        path_.push_back(tree_->child(path_.back(), function));
    }
    void leave(const Call &c) override {
        CallTree::Node &n = tree_->node(path_.back());
        path_.pop_back();
        ++n.calls;
        n.total_ns += c.end - c.begin;
        n.self_ns += c.self_ns;
    }

private:
    CallTree *tree_;
    std::vector<uint32_t> path_{CallTree::root};
};

}  // namespace sonde::report
