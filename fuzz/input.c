/*
 * input.c - the input layout every target shares (fuzz.h) and the one way
 * a target reports a finding.
 */
#include "fuzz/fuzz.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void fuzz_split(const uint8_t *data, size_t size, struct fuzz_input *in)
{
	size_t n = size < FUZZ_HDR_LEN ? size : FUZZ_HDR_LEN;

	memset(in->hdr, 0, sizeof(in->hdr));
	if (n)
		memcpy(in->hdr, data, n);
	in->ops = data + n;
	in->ops_len = size - n;
}

void fuzz_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("fsoracle fuzz: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}
