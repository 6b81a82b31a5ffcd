// Record concept, API calls (docs/api-tracing.md): the part of the recorder behind
// `sonde record --api`. It starts the tracer of src/apitrace with a sink that stages each traced
// call in the calling thread's staging array of the call-graph recorder (src/client), so that
// API calls and method events of a thread reach the trace in the order they happened, and it
// turns staged calls back into trace events (SONDE_TRACE_EVENT_API_CALL, _ARG, _RETURN, _END)
// and API function table entries when the recorder writes them.
//
// A staged call is one CallEvent {end ticks, function id, SONDE_TRACE_EVENT_API_CALL, number of
// slots that follow} and that many 16-byte slots holding a StagedCall, the arguments and the
// copied strings, claimed in one piece so that a hand-over never splits a call.
//
// Threads: the sink runs on the traced thread (possibly in a signal handler): it takes no lock
// and allocates nothing once the thread is registered (its first traced call registers it,
// like its first method event). Decoding runs under the recorder's lock on whichever thread
// writes (a delivery pool worker, a flushing thread, the stopping thread).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sonde/trace_events.h>

#include "client/registry.h"
#include "trace/trace_writer.h"

namespace sonde::record {

// Starts API tracing when SONDE_API names functions (SONDE_API_PROTOTYPES a prototype file),
// after unsetting both so that the program's children do not trace. Returns "" when it started
// or nothing was asked, else the error (nothing is patched then).
std::string start_api_tracing();

// Puts every patched slot back and returns the tracer's warnings (libraries never loaded,
// functions missing from a library loaded later). Not for a crashing process.
std::vector<std::string> stop_api_tracing();

// Converts the staged call at `p` (a CallEvent of kind SONDE_TRACE_EVENT_API_CALL followed by
// its slots, all before `end`) into trace events appended to `out`, interning copied strings
// and adding the table entries of functions the writer has not named yet. Returns the first
// CallEvent after the call. Caller holds the recorder's lock.
const client::CallEvent *decode_api_call(const client::CallEvent *p, const client::CallEvent *end,
                                         trace::TraceWriter &writer, std::vector<sonde_trace_event_t> &out);

// Adds the table entries of every traced function the writer has not named yet (at stop, so
// that functions never called are listed too). Caller holds the recorder's lock.
void name_api_functions(trace::TraceWriter &writer);

}  // namespace sonde::record
