// Where `sonde report` and `sonde export` get their call events: open_event_source() picks a
// reader for a file and returns it as the EventSource of src/report: a Sonde trace (its magic;
// what `sonde record` writes; trace_source.h) or the event text format (report/text_source.h:
// a line-oriented file that tests and people write). Another reader plugs in here, in this one
// function.
#pragma once

#include <memory>
#include <string>

#include "report/event.h"

// The events of `path`, or nullptr with `*error` set to a sentence naming the file.
std::unique_ptr<sonde::report::EventSource> open_event_source(const std::string &path, std::string *error);
