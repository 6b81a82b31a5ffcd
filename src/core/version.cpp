// sonde_get_version: callable before initialisation.
#include <sonde/defs.h>

extern "C" SONDE_API uint32_t sonde_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch) {
    if (major) *major = SONDE_VERSION_MAJOR;
    if (minor) *minor = SONDE_VERSION_MINOR;
    if (patch) *patch = SONDE_VERSION_PATCH;
    return SONDE_VERSION;
}
