// Client concept: the string/array protocol helpers (on core/array_protocol.h) and the client
// queries behind the C layer.
#pragma once

#include <string>

#include <sonde/client.h>

#include "core/array_protocol.h"

namespace sonde::client {

// NULL_POINTER when a string has storage size but no storage.
sonde_status_t check_string(const sonde_string_t &s);
// Writes v (truncated, NUL-terminated) and its actual_size; false if it did not fit.
bool put_string(sonde_string_t &s, const std::string &v);
sonde_status_t client_list(sonde_client_array_t *clients);
sonde_status_t client_info(sonde_client_id_t client, sonde_client_info_t *info);

}  // namespace sonde::client
