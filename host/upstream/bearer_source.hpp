#pragma once

#include "upstream/bearer_challenge.hpp"

#include <string>

namespace gatehouse::upstream {

// Where the host's own bearer token for an HTTP upstream comes from: one
// the operator gave (token_file, token_env), or one the host gets from the
// upstream's authorization server (oauth:, upstream/client_credentials.hpp).
// Never the agent's. Called from the transport's request threads.
class BearerSource {
public:
    virtual ~BearerSource() = default;
    // The token to send now. Throws std::runtime_error saying why there is none.
    virtual std::string current() = 0;
    // The upstream answered 401 to `token` (empty: the request carried
    // none), or 403 for want of scope, saying `challenge` in its
    // WWW-Authenticate: true when another one may be had, and the request
    // is worth sending again once.
    virtual bool refused(const std::string& token, const BearerChallenge& challenge) = 0;
};

// The operator's token, as it is: a 401 cannot be helped by asking again.
class FixedBearer final : public BearerSource {
public:
    explicit FixedBearer(std::string token) : token_(std::move(token)) {}
    std::string current() override { return token_; }
    bool refused(const std::string&, const BearerChallenge&) override { return false; }

private:
    const std::string token_;
};

} // namespace gatehouse::upstream
