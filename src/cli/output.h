// An output file that appears only when it is complete (output.cpp).
//
// A command that writes a file through AtomicOutput writes a temporary file instead, created
// with mkstemp() next to the output (same directory, so same file system), and commit() renames
// it onto the output. Until then nothing at the output's path changes: a failure, an exception,
// an early return (the destructor) or a SIGINT, SIGTERM, SIGHUP or SIGQUIT (a handler, while the
// temporary file exists) removes the temporary file and leaves the output as it was. SIGXFSZ is
// ignored meanwhile, so that a file-size limit (RLIMIT_FSIZE) is a write error (EFBIG) like a
// full disk, not the end of the process. Signal dispositions are restored by the destructor.
//
// Permissions: a new output gets 0644 less the umask (what the trace writer gives the files it
// creates); an output that is replaced keeps its permission bits, as if it had been truncated
// and rewritten. An output given as a symbolic link is written through it: the link's target is
// replaced, the link stays.
//
// One AtomicOutput at a time per process (the signal handler knows one temporary path).
#pragma once

#include <string>

namespace sonde::cli {

class AtomicOutput {
public:
    AtomicOutput() = default;
    ~AtomicOutput();
    AtomicOutput(const AtomicOutput &) = delete;
    AtomicOutput &operator=(const AtomicOutput &) = delete;

    // What create() found.
    enum class Created {
        ok,       // the temporary file exists
        exists,   // the output exists and replace is false
        refused,  // the output is not a regular file (a directory, a device, a broken link)
        failed    // the temporary file cannot be made (no space, no permission...)
    };

    // Creates the temporary file for `path`. With replace false, an existing output is refused
    // now and again at commit(). On failure *error says why ("PATH: what is wrong").
    Created create(const std::string &path, bool replace, std::string *error);

    // The temporary file to write (valid after create()).
    const std::string &temp_path() const { return temp_; }
    // The file that commit() replaces (the output, or the target of a symbolic link).
    const std::string &target_path() const { return target_; }

    // Flushes the temporary file to disk and renames it onto the output. Returns false with
    // *error set; the temporary file is then removed.
    bool commit(std::string *error);

    // Removes the temporary file now (also done by the destructor).
    void discard();

private:
    std::string target_;
    std::string temp_;
    int fd_ = -1;
    bool replace_ = false;
    bool handlers_ = false;
};

}  // namespace sonde::cli
