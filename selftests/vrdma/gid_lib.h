/* SPDX-License-Identifier: GPL-2.0 */
/* Finding a device's RoCE v2 IPv4 GID, for every test program. */
#ifndef VRDMA_GID_LIB_H
#define VRDMA_GID_LIB_H

#include <stdio.h>
#include <string.h>

/* The index of @dev's RoCE v2 GID with an IPv4 address, or -1. */
static inline int rc_find_gid(const char *dev)
{
	char path[256], gid[64], type[32];
	int i, found = -1;
	FILE *f;

	for (i = 0; i < 4096 && found < 0; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gids/%d", dev, i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(gid, sizeof(gid), f))
			gid[0] = 0;
		fclose(f);
		if (strncmp(gid, "0000:0000:0000:0000:0000:ffff:", 30))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d",
			 dev, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(type, sizeof(type), f) &&
		    !strncmp(type, "RoCE v2", 7))
			found = i;
		fclose(f);
	}
	return found;
}

#endif
