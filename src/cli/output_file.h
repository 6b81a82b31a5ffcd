// Output files of `sonde report` and `sonde export`: a file is written through AtomicOutput
// (output.h), so that it appears under the requested name only when complete and a failed or
// interrupted run leaves any previous file as it was; "-" writes to stdout.
#pragma once

#include <fstream>
#include <ostream>
#include <string>

#include "cli/output.h"

class OutputFile {
public:
    OutputFile() = default;
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;

    // Creates the temporary file for `path` (or selects stdout for "-"). Unless `overwrite`, an
    // existing `path` is refused. False with `*error` set on failure.
    bool open(const std::string &path, bool overwrite, std::string *error);
    std::ostream &stream();
    // Flushes and closes the temporary file and renames it onto the target. False with
    // `*error` set; the temporary file is then removed.
    bool commit(std::string *error);

private:
    std::string path_;
    sonde::cli::AtomicOutput atomic_;
    std::ofstream file_;
    bool stdout_ = false;
};
