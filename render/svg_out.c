/* svg_out: see svg_out.h. */
#include "svg_out.h"

#include <math.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at p that a name may hold in XML (no
 * C0 control, not even tab or newline, no DEL, U+FFFE or U+FFFF), 0 if
 * there is none. p is NUL-terminated. */
static size_t svg_out_utf8_len(const unsigned char *p)
{
	unsigned char c = p[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return c >= 0x20 && c != 0x7f;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if (c == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf))
		return 0; /* U+FFFE, U+FFFF */
	return n;
}

size_t svg_out_text_chars(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p) {
		size_t len = svg_out_utf8_len(p);

		p += len ? len : 1;
		n++;
	}
	return n;
}

void svg_out_text(FILE *out, const char *s, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p && max_chars; max_chars--) {
		size_t len = svg_out_utf8_len(p);

		if (!len) {
			fputs("\xef\xbf\xbd", out);
			p++;
			continue;
		}
		switch (*p) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&apos;", out);
			break;
		default:
			fwrite(p, 1, len, out);
		}
		p += len;
	}
}

void svg_out_px(FILE *out, double v)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%.2f", v);

	while (n > 1 && buf[n - 1] == '0')
		n--;
	if (buf[n - 1] == '.')
		n--;
	if (n == 2 && buf[0] == '-' && buf[1] == '0')
		n = 1, buf[0] = '0';
	fwrite(buf, 1, n, out);
}

void svg_out_count(FILE *out, double v)
{
	char digits[64];
	double ip = floor(v + 0.005);
	int n, i;

	if (!(ip < 1e18)) {
		fprintf(out, "%g", v);
		return;
	}
	n = snprintf(digits, sizeof(digits), "%.0f", ip);
	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			putc(',', out);
		putc(digits[i], out);
	}
	if (fabs(v - ip) >= 0.005)
		fprintf(out, ".%02d", (int)lround((v - ip) * 100) % 100);
}

void svg_out_hsl(char buf[8], double hue, double sat, double light)
{
	double c = (1 - fabs(2 * light - 1)) * sat;
	double hp = fmod(hue, 360) / 60;
	double x = c * (1 - fabs(fmod(hp, 2) - 1));
	double m = light - c / 2, r = 0, g = 0, b = 0;

	if (hp < 1)
		r = c, g = x;
	else if (hp < 2)
		r = x, g = c;
	else if (hp < 3)
		g = c, b = x;
	else if (hp < 4)
		g = x, b = c;
	else if (hp < 5)
		r = x, b = c;
	else
		r = c, b = x;
	snprintf(buf, 8, "#%02x%02x%02x", (unsigned)lround((r + m) * 255),
		 (unsigned)lround((g + m) * 255), (unsigned)lround((b + m) * 255));
}
