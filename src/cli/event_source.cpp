// open_event_source() (see event_source.h).
#include "cli/event_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/trace_source.h"
#include "report/text_source.h"

namespace {

// True when the file starts with the Sonde trace magic.
bool is_sonde_trace(const std::string &path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char magic[8] = {};
    const ssize_t n = ::read(fd, magic, sizeof magic);
    ::close(fd);
    return n == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic, "SONDETRC", 8) == 0;
}

}  // namespace

std::unique_ptr<sonde::report::EventSource> open_event_source(const std::string &path, std::string *error) {
    if (access(path.c_str(), R_OK) != 0) {
        *error = path + ": " + std::strerror(errno);
        return nullptr;
    }
    try {
        if (is_sonde_trace(path)) return std::make_unique<SondeTraceEventSource>(path);
        if (sonde::report::TextEventSource::recognizes(path))
            return std::make_unique<sonde::report::TextEventSource>(path);
    } catch (const sonde::report::Error &e) {
        *error = e.what();
        return nullptr;
    }
    *error = path +
             ": not a trace of call events (neither a Sonde trace, as sonde record writes, nor an event text "
             "file, which starts with \"sonde-events 1\")";
    return nullptr;
}
