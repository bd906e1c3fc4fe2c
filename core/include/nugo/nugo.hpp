// The one include a nugo user needs.
#pragma once

#include "nugo/config.hpp"
#include "nugo/runtime.hpp"
#include "nugo/topology.hpp"
#include "nugo/waitgroup.hpp"
