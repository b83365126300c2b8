// texc: the command line (spec section 6); compiler/driver/CommandLine.cpp parses and runs it.
#include "compiler/driver/Commands.h"

int main(int argc, char** argv) { return texc::runCommandLine(argc, argv); }
