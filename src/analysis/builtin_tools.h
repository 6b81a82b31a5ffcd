// Factories of the built-in tools that live in their own files; the registry is in
// builtin_tools.cpp. Each throws std::invalid_argument (message for the user) on bad options.
#pragma once

#include <memory>
#include <string>

#include <sonde/tool.hpp>

namespace sonde::analysis {

// cache_sim (cache_sim.cpp): options "NAME:SIZE:WAYS:LINE[:POLICY],..." or "" for cachegrind's
// default hierarchy I1:32K:8:64,D1:32K:8:64,LL:1M:16:64.
std::unique_ptr<sonde::tool> make_cache_sim(const std::string &options);

// reuse_distance (reuse_distance.cpp): options "line_size=N,sample_rate=R | sample_size=S,
// jobs=N,per_shard=1" (all optional; exact, line size 64 by default).
std::unique_ptr<sonde::tool> make_reuse_distance(const std::string &options);

}  // namespace sonde::analysis
