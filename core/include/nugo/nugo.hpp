// The one include a nugo user needs.
#pragma once

#include "nugo/config.hpp"
#include "nugo/runtime.hpp"
#include "nugo/stats.hpp"
#include "nugo/topology.hpp"
#include "nugo/bufio.hpp"
#include "nugo/chan.hpp"
#include "nugo/context.hpp"
#include "nugo/io.hpp"
#include "nugo/net.hpp"
#include "nugo/numa.hpp"
#include "nugo/sync.hpp"
#include "nugo/syscall.hpp"
#include "nugo/time.hpp"
#include "nugo/waitgroup.hpp"
