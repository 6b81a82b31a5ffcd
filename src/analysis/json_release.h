// Results JSON that survives running out of memory. nlohmann::json's destructor allocates: it
// moves the children of an array or object onto a heap-allocated stack (to avoid deep
// recursion), so destroying a non-empty container when memory runs out throws std::bad_alloc
// out of a noexcept destructor and ends the process. release() empties a value from its
// deepest last element up, which allocates nothing (a scalar or an empty container is destroyed
// without that stack); JsonRelease does it when its scope ends, on success and on unwinding.
//
// Rules for the results code of the analyzer and the built-in tools: every named array or
// object has a JsonRelease; values are built with operator[] and push_back of scalars or of
// released values, never with nested brace initialisers ({{"key", v}, ...}: their temporaries
// are non-empty containers destroyed with the stack); an array that takes containers reserves
// its room first (json_array_reserve), so that push_back cannot fail half-way.
// Cost of release(): one step per element times its depth.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace sonde::analysis {

inline void release(nlohmann::json &root) noexcept {
    while (root.is_structured() && !root.empty()) {
        nlohmann::json *node = &root;
        for (;;) {
            auto last = node->end();
            --last;
            nlohmann::json &child = last.value();
            if (child.is_structured() && !child.empty()) {
                node = &child;
                continue;
            }
            node->erase(last);  // a scalar or an empty container: nothing to allocate
            break;
        }
    }
}

class JsonRelease {
public:
    explicit JsonRelease(nlohmann::json &j) : j_(j) {}
    ~JsonRelease() { release(j_); }
    JsonRelease(const JsonRelease &) = delete;
    JsonRelease &operator=(const JsonRelease &) = delete;

private:
    nlohmann::json &j_;
};

// Makes `j` an array with room for `n` elements.
inline void json_array_reserve(nlohmann::json &j, size_t n) {
    if (!j.is_array()) j = nlohmann::json::array();
    j.get_ref<nlohmann::json::array_t &>().reserve(n);
}

}  // namespace sonde::analysis
