// Factories of the built-in tools that live in their own files; the registry is in
// builtin_tools.cpp. Each throws std::invalid_argument (message for the user) on bad options.
#pragma once

#include <memory>
#include <string>

#include <sonde/tool.hpp>

namespace sonde::analysis {

// cache_sim (cache_sim.cpp): options "NAME:SIZE:WAYS:LINE[:POLICY],..." or "" for cachegrind's
// default hierarchy I1:32K:8:64,D1:32K:8:64,LL:1M:16:64 (model=cachegrind, the default), or
// "model=drcachesim[,KEY=VALUE...]" for DynamoRIO drcachesim's (cache_sim_drcachesim.cpp).
std::unique_ptr<sonde::tool> make_cache_sim(const std::string &options);
std::unique_ptr<sonde::tool> make_cache_sim_drcachesim(const std::string &options);

// reuse_distance (reuse_distance.cpp): options "line_size=N,sample_rate=R | sample_size=S,
// jobs=N,per_shard=1" (all optional; exact, line size 64 by default; model=gem5), or
// "model=drcachesim[,line_size=N,distance_threshold=N,report_top=N]" for DynamoRIO
// drcachesim's reuse_distance tool (reuse_distance_drcachesim.cpp).
std::unique_ptr<sonde::tool> make_reuse_distance(const std::string &options);
std::unique_ptr<sonde::tool> make_reuse_distance_drcachesim(const std::string &options);

// Removes the "model=NAME" item from a comma-separated option list: returns NAME ("" when
// absent) and sets *rest to the other items, in order.
std::string take_model(const std::string &options, std::string *rest);

}  // namespace sonde::analysis
