/*
 * fdio.h - all of a buffer to a file descriptor: write(2) again after a
 * short write or an interrupted one.
 */
#ifndef FSORACLE_BASE_FDIO_H
#define FSORACLE_BASE_FDIO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

/* True when every byte went; false at the first error or a 0 write. */
static inline bool fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

#endif
