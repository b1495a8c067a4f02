/*
 * crc32c.h - the checksum now lives in base/crc32c.h, below hw/ and ref/.
 * This name stays only because fuzz/image.c still includes it; when that
 * file includes base/crc32c.h, delete this one.
 */
#include "base/crc32c.h"
