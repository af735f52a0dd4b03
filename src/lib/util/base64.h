/* SPDX-License-Identifier: Apache-2.0 */
/* Base64 (RFC 4648, standard alphabet, with padding) for the front ends' JSON. */
#pragma once

#include <stddef.h>

/* The value (0..63) of a character of the alphabet, -1 for any other. */
int pd_base64_value(unsigned char c);

/* The encoding of `len` bytes, NUL-terminated; NULL when out of memory. Caller frees. */
char *pd_base64_encode(const void *data, size_t len);

/*
 * Decodes `len` characters: the standard alphabet, '=' padding only at the end, ASCII
 * whitespace ignored. -EINVAL for anything else (a character, misplaced padding, a length
 * that is not whole), -ENOMEM. Caller frees *ret (NUL-terminated, not counted).
 */
int pd_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len);
