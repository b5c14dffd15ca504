// Module TonearmConfig.
