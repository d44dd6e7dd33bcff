/* demangle: see demangle.h. */
#include "demangle.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* libstdc++'s demangler; extern "C" there, so callable from C. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

bool demangle_is_mangled(const char *name)
{
	return !strncmp(name, "_Z", 2);
}

char *demangle(const char *name, int *ret_err)
{
	int status = 0;
	char *d;

	if (!demangle_is_mangled(name)) {
		*ret_err = -EINVAL;
		return NULL;
	}
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d)
		*ret_err = status == -1 ? -ENOMEM : -EINVAL;
	return d;
}
