-- galera-doe rw_mix: short transactions that read and write a hot set of rows, the read/write
-- ratio study's question (how often writers on different nodes collide). Written for this
-- project; it reuses only the table layout and the prepare/cleanup commands of sysbench's
-- oltp_common.lua (shipped with sysbench 1.0.20), so `prepare` makes the oltp_* tables.
--
-- Each transaction: BEGIN, then --statements_per_trx statements on random rows among the first
-- --hot_rows of a random table, each an UPDATE with probability --write_share and a point
-- SELECT otherwise, then COMMIT. A certification conflict (1213) or a brute-force abort
-- aborts the transaction; sysbench counts it as an ignored error and runs it again.

require("oltp_common")

sysbench.cmdline.options.statements_per_trx =
   {"Statements per transaction", 4}
sysbench.cmdline.options.write_share =
   {"Probability that a statement writes (0 to 1)", 0.5}
sysbench.cmdline.options.hot_rows =
   {"Rows of each table the transactions touch, from the first", 100}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   hot = math.max(1, math.min(sysbench.opt.hot_rows, sysbench.opt.table_size))
end

function thread_done()
   con:disconnect()
end

function event()
   con:query("BEGIN")
   for _ = 1, sysbench.opt.statements_per_trx do
      local table_number = sysbench.rand.uniform(1, sysbench.opt.tables)
      local id = sysbench.rand.uniform(1, hot)
      if sysbench.rand.uniform_double() < sysbench.opt.write_share then
         con:query(string.format("UPDATE sbtest%d SET k = k + 1 WHERE id = %d",
                                 table_number, id))
      else
         con:query(string.format("SELECT c FROM sbtest%d WHERE id = %d", table_number, id))
      end
   end
   con:query("COMMIT")
end
