// Text helpers shared by the writers: times for people, and escaping for JSON, CSV and HTML.
// Names come from demangled C++ (`<`, `>`, `&`, commas, quotes) and marks from the program
// (any bytes), so every writer escapes what it writes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sonde::report {

// "950 ns", "12.345 us", "1.500 ms", "2.000 s".
std::string format_ns(uint64_t ns);

// Appends `ns` as microseconds with three decimals, exactly: 1234567 -> "1234.567".
void append_us(std::string &out, uint64_t ns);

// Appends an unsigned decimal.
void append_uint(std::string &out, uint64_t v);

// Appends `s` as a JSON string literal with its quotes. Invalid UTF-8 becomes U+FFFD; `<`, `>`
// and `&` are written as \u escapes so that the text is also safe inside an HTML <script>.
void append_json_string(std::string &out, std::string_view s);

// Appends `s` as one CSV field (RFC 4180: quoted when it holds a comma, quote or line break).
void append_csv_field(std::string &out, std::string_view s);

// `s` with & < > " ' replaced by character references (invalid UTF-8 becomes U+FFFD).
std::string html_escape(std::string_view s);

// `s` with invalid UTF-8 sequences replaced by U+FFFD.
std::string valid_utf8(std::string_view s);

}  // namespace sonde::report
