// open_event_source() (see event_source.h).
#include "cli/event_source.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "report/text_source.h"

std::unique_ptr<sonde::report::EventSource> open_event_source(const std::string &path, std::string *error) {
    if (access(path.c_str(), R_OK) != 0) {
        *error = path + ": " + std::strerror(errno);
        return nullptr;
    }
    if (!sonde::report::TextEventSource::recognizes(path)) {
        *error = path + ": not a call-event file (an event text file starts with \"sonde-events 1\")";
        return nullptr;
    }
    try {
        return std::make_unique<sonde::report::TextEventSource>(path);
    } catch (const sonde::report::Error &e) {
        *error = e.what();
        return nullptr;
    }
}
