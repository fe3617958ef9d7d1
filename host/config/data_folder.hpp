#pragma once

#include <filesystem>
#include <stdexcept>

namespace gatehouse::config {

// The data folder cannot hold this host's files safely; says why.
class DataFolderUnsafe : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Readies `data_dir` (Config::data_dir) before anything is kept in it: the
// families' files, the state database, conversation folders. A folder made
// here is its user's alone (0700), so what the families write inside with
// the usual modes is closed to other users; one that exists already and
// that other users may read is kept as the operator left it, with a warning
// naming the command that closes it. Throws DataFolderUnsafe when the
// folder is the fallback under the shared temp folder (no HOME,
// XDG_DATA_HOME or GATEHOUSE_DATA_DIR) and another user made it first (or a
// link stands there): that user could read and change everything kept in it.
void prepare_data_folder(const std::filesystem::path& data_dir);

} // namespace gatehouse::config
