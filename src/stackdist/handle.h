// The objects behind the stackdist C handles (sonde_stackdist_t, sonde_histogram_t). Internal:
// shared by api.cpp and the test-only fault hook of tests/stackdist.
#pragma once

#include <sonde/stackdist.h>
#include "stackdist/histogram.h"
#include "stackdist/reuse.h"

struct sonde_stackdist_t {
    explicit sonde_stackdist_t(const sonde::stackdist::ReuseConfig &cfg) : reuse(cfg) {}
    sonde::stackdist::Reuse reuse;
};

struct sonde_histogram_t {
    sonde::stackdist::Histogram h;
};
