/* reply_render: see reply_render.h. */
#include "reply_render.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int reply_render(char *folded, const struct reply_render_opts *o, char **ret_folded,
		 char **ret_output, char **ret_error)
{
	struct proto_render render = *o->render;
	char err[128];
	int r;

	if (!folded)
		return -ENOMEM;
	if (o->format == PROTO_FORMAT_FOLDED) {
		*ret_folded = folded;
		return 0;
	}
	/* A differential graph keeps "auto": render_output() gives it red/blue. */
	if (render.palette == PROTO_PALETTE_AUTO && !o->differential)
		render.palette = proto_palette_of_kind(o->kind, o->oncpu);
	if (!render.countname[0])
		snprintf(render.countname, sizeof(render.countname), "%s",
			 proto_metric_unit(o->metric));
	r = render_output(folded, strlen(folded), o->format, &render, o->input,
			  o->differential ? "Differential Off-CPU Flame Graph"
					  : proto_title_of_kind(o->kind, o->oncpu),
			  ret_output, NULL, err, sizeof(err));
	free(folded);
	if (r == -ENODATA) {
		*ret_error = proto_reply_error(PROTO_ERR_NO_DATA, err);
		return *ret_error ? 0 : -ENOMEM;
	}
	return r;
}
