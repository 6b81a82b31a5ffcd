// Output files of sonde report and sonde export (see output_file.h).
#include "cli/output_file.h"

#include <iostream>

bool OutputFile::open(const std::string &path, bool overwrite, std::string *error) {
    path_ = path;
    if (path == "-") {
        stdout_ = true;
        return true;
    }
    if (atomic_.create(path, overwrite, error) != sonde::cli::AtomicOutput::Created::ok) return false;
    file_.open(atomic_.temp_path(), std::ios::binary | std::ios::trunc);
    if (!file_) {
        *error = atomic_.temp_path() + ": cannot open for writing";
        atomic_.discard();
        return false;
    }
    return true;
}

std::ostream &OutputFile::stream() { return stdout_ ? std::cout : static_cast<std::ostream &>(file_); }

bool OutputFile::commit(std::string *error) {
    if (stdout_) {
        std::cout.flush();
        if (!std::cout) {
            *error = "stdout: write error";
            return false;
        }
        return true;
    }
    file_.flush();
    const bool written = static_cast<bool>(file_);
    file_.close();
    if (!written || file_.fail()) {
        *error = path_ + ": write error";
        atomic_.discard();
        return false;
    }
    return atomic_.commit(error);
}
