/**
 * @file sonde.h
 * @brief Includes every public Sonde header.
 */
#ifndef SONDE_SONDE_H
#define SONDE_SONDE_H

#include <sonde/defs.h>
#include <sonde/status.h>
#include <sonde/session.h>
#include <sonde/record.h>
#include <sonde/buffer.h>
#include <sonde/profile.h>
#include <sonde/profile_shared.h>
#include <sonde/trace.h>
#include <sonde/trace_events.h>
#include <sonde/analysis.h>
#include <sonde/stackdist.h>
#include <sonde/client.h>
#include <sonde/instrument.h>

#endif /* SONDE_SONDE_H */
