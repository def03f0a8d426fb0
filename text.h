/*
 * Byte-level helpers the three parsers (HTTP, JSON, kubeconfig) share. Header-only and pure.
 */
#ifndef TEXT_H
#define TEXT_H

/* The value of a hexadecimal digit, or -1 when c is not one. */
static inline int text_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
