#pragma once

#include <boost/asio/ip/address.hpp>

#include <string>
#include <vector>

namespace gatehouse::metrics {

// Addresses and CIDR blocks (metrics.allow) a scrape may come from. An
// IPv4 peer reached over an IPv6 socket (::ffff:10.0.0.1) matches the IPv4
// blocks.
class AddressAllowList {
public:
    // Throws std::invalid_argument for an entry that is neither an address nor a block.
    explicit AddressAllowList(const std::vector<std::string>& entries);

    bool empty() const { return blocks_.empty(); }
    bool allows(const boost::asio::ip::address& peer) const;

private:
    struct Block {
        boost::asio::ip::address network;
        unsigned prefix = 0;
    };
    std::vector<Block> blocks_;
};

} // namespace gatehouse::metrics
