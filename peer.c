/* The peers' wire protocol (peer.h): being built. */
#include "fence.h"
