/*
 * svg_out: what the SVG renderers (flame_svg, latency_plot) write alike:
 * text escaped for XML, pixel coordinates, counts for people and colours.
 * Writes to a stdio stream and leaves write errors in it (ferror); does not
 * log.
 */
#ifndef SVG_OUT_H
#define SVG_OUT_H

#include <stddef.h>
#include <stdio.h>

/* Writes at most max_chars characters of s as XML text (element content or
 * a quoted attribute value): escapes the five specials and writes U+FFFD
 * for each byte XML cannot hold (invalid UTF-8, C0 controls, DEL). */
void svg_out_text(FILE *out, const char *s, size_t max_chars);

/* Characters as svg_out_text writes them: one per byte it replaces. */
size_t svg_out_text_chars(const char *s);

/* A px coordinate: 2 decimals, trailing zeros dropped. */
void svg_out_px(FILE *out, double v);

/* A count for people: thousands separated by commas, 2 decimals if it has
 * a fraction. */
void svg_out_count(FILE *out, double v);

/* "#rrggbb" of hue (degrees), saturation and lightness (0..1) into buf. */
void svg_out_hsl(char buf[8], double hue, double sat, double light);

#endif
