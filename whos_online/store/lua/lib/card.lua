-- store_card(cards, member, card, ttl, keep): the member's card, how the block
-- shows them. With keep, a card already stored stays (a socket's record: the
-- page's card says where the member is).
local function store_card(cards, member, card, ttl, keep)
  redis.call(keep and 'HSETNX' or 'HSET', cards, member, card)
  redis.call('EXPIRE', cards, ttl)
end
