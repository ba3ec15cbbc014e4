/* Internal hooks of the C API, for tests: pretend a device so lookups run without a GPU. */
#ifndef FT_API_INTERNAL_H
#define FT_API_INTERNAL_H

#include "db.h"
#include "space.h"

void ft__ctx_set_device(ft_ctx *ctx, const ft_device_info *dev, const ft_device_limits *lim);

#endif
