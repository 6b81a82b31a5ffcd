// A test client whose entry point throws a C++ exception: Sonde must catch it and unload it.
#include <stdexcept>

#include <sonde/client.h>

SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *, sonde_client_id_t, const char *) {
    throw std::runtime_error("broken client");
}
