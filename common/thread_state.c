/* thread_state: see thread_state.h. */
#include "thread_state.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *letter;
	const char *names[2];
} states[THREAD_STATE_COUNT] = {
	{ "R", { "running", "preempted" } },
	{ "S", { "sleeping", "interruptible" } },
	{ "D", { "disk", "uninterruptible" } },
	{ "O", { "other", NULL } },
};

const char *thread_state_name(unsigned state)
{
	return state < THREAD_STATE_COUNT ? states[state].letter : "?";
}

int thread_state_parse(const char *name)
{
	for (unsigned i = 0; i < THREAD_STATE_COUNT; i++) {
		if (!strcasecmp(name, states[i].letter))
			return i;
		for (unsigned j = 0; j < 2; j++)
			if (states[i].names[j] && !strcasecmp(name, states[i].names[j]))
				return i;
	}
	return -EINVAL;
}

int thread_state_mask_parse(const char *list, uint32_t *ret_mask)
{
	uint32_t mask = 0;
	const char *p = list;

	for (;;) {
		size_t len = strcspn(p, ",");
		char name[32];
		int bit;

		if (len == 0 || len >= sizeof(name))
			return -EINVAL;
		memcpy(name, p, len);
		name[len] = '\0';
		bit = thread_state_parse(name);
		if (bit < 0)
			return bit;
		mask |= 1u << bit;
		if (!p[len])
			break;
		p += len + 1;
	}
	*ret_mask = mask;
	return 0;
}
